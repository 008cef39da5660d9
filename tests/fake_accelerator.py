"""A "fake accelerator" target: the whole of what adding a target takes (docs/platforms.md).

Its device is the host CPU under another target name. It keeps the host's methods (HostPlatform) and overrides
what makes it its own: the languages it runs, its worker's environment, and the toolkit version its results
name, which is how a test sees that the worker judged with this platform's methods. Registered when
KERNELEVOLVE_PLATFORMS names this module (the parent and the worker both import it then)."""

from __future__ import annotations

from dataclasses import dataclass

from kernelevolve.platforms import register
from kernelevolve.platforms.cpu import HostPlatform

TOOLKIT = "fake-toolkit 1.0"


@dataclass(frozen=True)
class FakeAccelerator(HostPlatform):
    def build_versions(self) -> dict[str, str]:
        return {"fakeaccel": TOOLKIT}


FAKE = register(
    FakeAccelerator(
        name="fakeaccel",
        device_type="cpu",
        languages=("pytorch", "cpp"),
        env={"KERNELEVOLVE_FAKEACCEL": "1"},
        note="the host CPU under another name, for the platform seam's test",
    )
)
