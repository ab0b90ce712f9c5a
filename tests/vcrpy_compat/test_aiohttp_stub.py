"""aiohttp forms are recorded as the bytes aiohttp sends, and replay by their parts.

Found by a red-team pass: ``session.post(url, data=aiohttp.FormData(...))`` (a file upload)
failed at the save with ``TypeError: 'FormData' object is not iterable``: vcrpy's aiohttp
stub kept the ``FormData`` object as the request body.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import aiohttp
import pytest

import llmcassette
from llmcassette import CassetteMismatch
from llmcassette.cassette import jsonl as cassette_file

FILE = b"\x00\x01 a file's bytes \xff\xfe"


class _Received:
    """What the server was sent: (content-type, body) of each request."""

    requests: ClassVar[list[tuple[str, bytes]]] = []


class _Echo(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        _Received.requests.append((self.headers["content-type"], body))
        answer = json.dumps({"received": len(body)}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


@contextmanager
def _serving() -> Iterator[str]:
    _Received.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1/files"
    finally:
        server.shutdown()
        server.server_close()


def _upload(content: bytes = FILE) -> aiohttp.FormData:
    form = aiohttp.FormData()
    form.add_field("file", content, filename="a.bin", content_type="application/octet-stream")
    form.add_field("purpose", "fine-tune")
    return form


async def _post(url: str, **kwargs: Any) -> Any:
    async with aiohttp.ClientSession() as session, session.post(url, **kwargs) as response:
        return await response.json()


def _stored_request(path: Path) -> tuple[str, bytes]:
    """The recorded request's content-type and body bytes."""
    stored = cassette_file.read(path.read_bytes(), path).interactions[0]
    content_type = next(
        v[0] for k, v in stored.request_headers.items() if k.lower() == "content-type"
    )
    return content_type, stored.request_body or b""


async def test_a_form_data_upload_is_stored_as_sent_and_replays_by_its_parts(
    tmp_path: Path,
) -> None:
    path = tmp_path / "upload.jsonl"
    with _serving() as url:
        with llmcassette.use_cassette(path, record_mode="once"):
            live = await _post(url, data=_upload())
        [sent] = _Received.requests
    # exactly what the server got: the upload's bytes under its boundary
    assert _stored_request(path) == sent
    assert sent[0].startswith("multipart/form-data; boundary=")
    assert FILE in sent[1]
    assert b"fine-tune" in sent[1]

    # the server is gone: a new form (a new boundary) replays
    with llmcassette.use_cassette(path, record_mode="none"):
        assert await _post(url, data=_upload()) == live
    with (
        llmcassette.use_cassette(path, record_mode="none"),
        pytest.raises(CassetteMismatch, match=r"body\[0\]\.content"),
    ):
        await _post(url, data=_upload(FILE.replace(b"\x01", b"\x02")))


async def test_a_file_field_of_a_dict_is_sent_whole_and_replays(tmp_path: Path) -> None:
    path = tmp_path / "upload.jsonl"
    document = tmp_path / "document.txt"
    document.write_bytes(b"the document's text")
    with _serving() as url:
        with document.open("rb") as file, llmcassette.use_cassette(path, record_mode="once"):
            live = await _post(url, data={"file": file, "purpose": "batch"})
        [sent] = _Received.requests
    assert _stored_request(path) == sent
    assert b"the document's text" in sent[1]
    with document.open("rb") as file, llmcassette.use_cassette(path, record_mode="none"):
        assert await _post(url, data={"file": file, "purpose": "batch"}) == live


async def test_form_fields_are_stored_url_encoded_and_compared_field_by_field(
    tmp_path: Path,
) -> None:
    path = tmp_path / "form.jsonl"
    with _serving() as url:
        with llmcassette.use_cassette(path, record_mode="once"):
            live = await _post(url, data={"purpose": "fine-tune", "n": "2"})
        [sent] = _Received.requests
    assert (
        _stored_request(path)
        == sent
        == (
            "application/x-www-form-urlencoded",
            b"purpose=fine-tune&n=2",
        )
    )
    with llmcassette.use_cassette(path, record_mode="none"):
        assert await _post(url, data=[("n", "2"), ("purpose", "fine-tune")]) == live
    with (
        llmcassette.use_cassette(path, record_mode="none"),
        pytest.raises(CassetteMismatch, match=r"body\.n"),
    ):
        await _post(url, data={"purpose": "fine-tune", "n": "3"})


async def test_a_json_body_still_records_and_replays(tmp_path: Path) -> None:
    path = tmp_path / "json.jsonl"
    with _serving() as url, llmcassette.use_cassette(path, record_mode="once"):
        live = await _post(url, json={"purpose": "fine-tune"})
    stored = cassette_file.read(path.read_bytes(), path).interactions[0]
    assert json.loads(stored.request_body or b"") == {"purpose": "fine-tune"}
    with llmcassette.use_cassette(path, record_mode="none"):
        assert await _post(url, json={"purpose": "fine-tune"}) == live
    with (
        llmcassette.use_cassette(path, record_mode="none"),
        pytest.raises(CassetteMismatch, match=r"body\.purpose"),
    ):
        await _post(url, json={"purpose": "batch"})
