"""A multipart/form-data field named as a credential (``api_key``, ``password``) is
redacted as the same field of a URL-encoded form is, and the scan reads it too.

Found by a red-team pass (round 2): ``httpx.post(..., data={"api_key": ...}, files=...)``
was written in clear, in JSONL and YAML, with a text or a binary file beside it.
"""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

import llmcassette
from llmcassette.cassette import jsonl as cassette_file
from llmcassette.redact import Redactor
from llmcassette.redact.scan import find_in_value

from ._server import serving

KEY = "q7Hc2LmX9vRt4PzW8sKd3NbY6fJg1A0e"  # no shape: a secret by its field name only
PASSWORD = "correct horse battery"


class Ok(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"{}")


@pytest.mark.parametrize("serializer", ["jsonl", "yaml"])
@pytest.mark.parametrize("upload", [b"plain text", bytes(range(256))])
def test_a_form_fields_credential_is_redacted_beside_a_file(
    tmp_path: Path, serializer: str, upload: bytes
) -> None:
    path = tmp_path / f"upload.{serializer}"
    fields = {"api_key": KEY, "password": PASSWORD, "purpose": "fine-tune"}
    with serving(Ok) as base, llmcassette.use_cassette(path, serializer=serializer):
        httpx.post(f"{base}/v1/files", data=fields, files={"file": ("a.bin", upload)})
    sent = _request_body(path)
    assert KEY.encode() not in sent
    assert PASSWORD.encode() not in sent
    assert b'name="api_key"\r\n\r\n<REDACTED:api_key>\r\n' in sent
    assert b"fine-tune" in sent  # the other fields, and the file, as they were
    assert upload in sent


def _request_body(path: Path) -> bytes:
    """The recorded request body's bytes (a binary one is stored as base64)."""
    if path.suffix == ".jsonl":
        body = cassette_file.read(path.read_bytes(), path).interactions[0].request_body
    else:
        body = yaml.safe_load(path.read_text())["interactions"][0]["request"]["body"]
    return body.encode() if isinstance(body, str) else bytes(body)


def test_the_scan_reads_form_fields() -> None:
    body = (
        '--b\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nfine-tune\r\n'
        f'--b\r\nContent-Disposition: form-data; name="api_key"\r\n\r\n{KEY}\r\n'
        '--b\r\nContent-Disposition: form-data; name="file"; filename="api_key"\r\n\r\nx\r\n'
        "--b--\r\n"
    )
    rules = Redactor().rules
    assert list(find_in_value(rules, {"body": {"text": body}})) == [("body.text", "api_key")]
    clean = body.replace(KEY, "<REDACTED:api_key>")
    assert list(find_in_value(rules, {"body": {"text": clean}})) == []
    # a file part named like a field is the file's content: not a credential by its name
    only_file = body.split("--b\r\n", 3)[3]
    assert rules.form_field_secrets("--b\r\n" + only_file) == []
