"""``ts.context``: what a handler learns about its model and the requests of a batch."""

from __future__ import annotations

import os

__all__ = ["Context", "RequestProcessor"]


class RequestProcessor:
    """The headers of one request of a batch and the status/headers of its response."""

    def __init__(self, request_header: dict) -> None:
        self._status_code = 200
        self._reason_phrase = None
        self._response_header: dict = {}
        self._request_header = request_header

    def get_request_property(self, key: str):
        return self._request_header.get(key)

    def get_request_properties(self) -> dict:
        return self._request_header

    def report_status(self, code, reason_phrase=None) -> None:
        self._status_code = code
        self._reason_phrase = reason_phrase

    def get_response_status_code(self) -> int:
        return self._status_code

    def get_response_status_phrase(self):
        return self._reason_phrase

    def add_response_property(self, key: str, value: str) -> None:
        self._response_header[key] = value

    def get_response_headers(self) -> dict:
        return self._response_header

    def get_response_header(self, key: str):
        return self._response_header.get(key)


class Context:
    """Model name, manifest, system properties and the current batch's request processors."""

    def __init__(
        self,
        model_name,
        model_dir,
        manifest,
        batch_size,
        gpu,
        mms_version,
        limit_max_image_pixels=True,
        metrics=None,
        model_yaml_config=None,
    ):
        self.model_name = model_name
        self.manifest = manifest
        self._system_properties = {
            "model_dir": model_dir,
            "gpu_id": gpu,
            "batch_size": batch_size,
            "server_name": "MMS",
            "server_version": mms_version,
            "limit_max_image_pixels": limit_max_image_pixels,
        }
        self.request_ids = None
        self._request_processor = None
        self._metrics = metrics
        self.model_yaml_config = model_yaml_config or {}
        self.stopping_criteria = None
        self.header_key_sequence_id = os.getenv("TS_REQUEST_SEQUENCE_ID", "ts_request_sequence_id")

    @property
    def system_properties(self) -> dict:
        return self._system_properties

    @property
    def request_processor(self):
        return self._request_processor

    @request_processor.setter
    def request_processor(self, value) -> None:
        self._request_processor = value

    @property
    def metrics(self):
        return self._metrics

    @metrics.setter
    def metrics(self, value) -> None:
        self._metrics = value

    def get_request_id(self, idx: int = 0):
        return self.request_ids.get(idx) if self.request_ids else None

    def get_request_header(self, idx: int, key: str):
        return self._request_processor[idx].get_request_property(key)

    def get_all_request_header(self, idx: int) -> dict:
        return self._request_processor[idx].get_request_properties()

    def set_response_content_type(self, idx: int, value: str) -> None:
        self.set_response_header(idx, "content-type", value)

    def get_response_content_type(self, idx: int):
        return self.get_response_headers(idx).get("content-type")

    def get_response_status(self, idx: int):
        rp = self._request_processor[idx]
        return rp.get_response_status_code(), rp.get_response_status_phrase()

    def set_response_status(self, code: int = 200, phrase: str = "", idx: int = 0) -> None:
        if self._request_processor is not None and self._request_processor[idx] is not None:
            self._request_processor[idx].report_status(code, reason_phrase=phrase)

    def set_all_response_status(self, code: int = 200, phrase: str = "") -> None:
        for idx in range(len(self._request_processor or ())):
            self.set_response_status(code, phrase, idx)

    def get_response_headers(self, idx: int) -> dict:
        return self._request_processor[idx].get_response_headers()

    def set_response_header(self, idx, key, value) -> None:
        self._request_processor[idx].add_response_property(key, value)

    def get_sequence_id(self, idx: int) -> str:
        return self._request_processor[idx].get_request_property(self.header_key_sequence_id)
