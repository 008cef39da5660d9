"""The object store's files, each kept twice: as a file under the runs directory (for people, editors, `diff`) and
as a row of the database (`models.Artifact`), written in the transaction that refers to it. A process reads the
file where it has one and the row where it has not: several processes on one run then need a shared database, not a
shared file system (docs/cli.md, "Several processes on one run")."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.orm import Session

from kernelevolve.store.models import Artifact


def write_files(runs_dir: Path, files: dict[str, str]) -> None:
    """Each file under runs_dir (relative path -> text); raises OSError as the file system does."""
    for rel, text in files.items():
        path = runs_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def keep(s: Session, files: dict[str, str]) -> None:
    """The files' rows in the transaction s (a rewrite replaces the row)."""
    for rel, text in files.items():
        s.merge(Artifact(path=str(rel), text=text))


def read(s: Session, runs_dir: Path, rel: str, materialize: bool = True) -> str:
    """The file's text from runs_dir, or from its row where this machine has no such file (with materialize, the
    file is then written here, best effort, for the next reader). FileNotFoundError where neither exists."""
    path = runs_dir / rel
    try:
        return path.read_text()
    except FileNotFoundError:
        row = s.get(Artifact, str(rel))
        if row is None:
            raise
    if not materialize:
        return row.text
    try:
        write_files(runs_dir, {rel: row.text})
    except OSError:
        pass  # a read-only runs directory: the row serves every read
    return row.text
