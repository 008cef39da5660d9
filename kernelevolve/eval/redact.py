"""Credentials taken out of what a candidate's processes printed (its log, an error's message) before the result
is stored, shown or put into a model's prompt: whatever a candidate could read, it could print (docs/harness.md,
"Isolation"). Torch-free; the evaluator applies it to every result it returns.
"""

from __future__ import annotations

import re

REDACTED = "[redacted]"
# Secrets recognisable by their own shape, wherever they appear.
_SHAPED = (
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)", re.S),
    re.compile(r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}"),  # OpenAI, Anthropic
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),  # AWS access key ids
    re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"),
    re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"),  # Slack
    re.compile(r"\bAIza[0-9A-Za-z_-]{30,}"),  # Google
    re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),  # JSON web tokens
)
# A password in a URL (a proxy's, a database's): the user stays, the password goes.
_URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s:/@]+:)[^\s@/]+(@)", re.I)
# An assignment to a name that looks like a credential, in any case and the usual notations: NAME=value (the
# environment, .npmrc's _authToken=), name = value and name: value (INI, YAML: aws_secret_access_key = ...), and
# "name": "value" (JSON: gcloud's refresh_token, docker's auth).
_ASSIGNED = re.compile(
    r"(\b[A-Za-z0-9_.-]*?(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PWD|CREDENTIAL|AUTH)S?(?:_[A-Z0-9]+)*"
    r"[\"']?[ \t]*[:=][ \t]*)"
    r"(?!(?:null|none|true|false)\b)(\"[^\"]*\"|'[^']*'|\S+)",  # a literal that is no secret kept
    re.I,
)
# .netrc's "password VALUE".
_NETRC = re.compile(r"(\bpassw(?:or)?d[ \t]+)(\S+)", re.I)


def redact(text: str) -> str:
    """`text` with every credential-like part replaced by REDACTED."""
    for pattern in _SHAPED:
        text = pattern.sub(REDACTED, text)
    text = _URL_PASSWORD.sub(rf"\1{REDACTED}\2", text)
    text = _ASSIGNED.sub(rf"\1{REDACTED}", text)
    return _NETRC.sub(rf"\1{REDACTED}", text)
