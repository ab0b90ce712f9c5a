"""SigV4-signed requests (boto3): what the redactor leaves of their headers."""

from __future__ import annotations

from llmcassette.redact import Redactor

KEY = "ASIA" + "LOCALPROVIDERKEY"
SIGNATURE = "9f" * 32
TOKEN = "IQoJb3JpZ2luX2VjEHUaCXVzLWVhc3QtMSJHMEUCIQ" + "LocalSessionToken" * 4


def test_botocore_headers_as_bytes_are_redacted_as_text() -> None:
    # vcrpy's boto3 stub hands over header values as botocore passed them, some as bytes.
    headers = {
        "Authorization": (
            f"AWS4-HMAC-SHA256 Credential={KEY}/20240301/us-east-1/bedrock/aws4_request, "
            f"SignedHeaders=content-type;host;x-amz-date, Signature={SIGNATURE}"
        ).encode(),
        "X-Amz-Date": b"20240301T093000Z",
        "X-Amz-Security-Token": TOKEN.encode(),
        "Content-Type": b"application/json",
    }
    out = Redactor(environ={}).headers(headers)  # type: ignore[arg-type]
    assert out["Content-Type"] == "application/json"
    assert out["Authorization"] == (
        "AWS4-HMAC-SHA256 Credential=<REDACTED:aws-access-key-id>/20240301/us-east-1/bedrock/"
        "aws4_request, SignedHeaders=content-type;host;x-amz-date, "
        "Signature=<REDACTED:aws-sigv4-signature>"
    )
    # The signing time changes on every run and dates the credentials' use: replaced.
    assert out["X-Amz-Date"] == "<REDACTED:x-amz-date>"
    assert out["X-Amz-Security-Token"].startswith("<REDACTED:")
    assert TOKEN not in str(out)
