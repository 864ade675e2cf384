"""A minimal Language Server Protocol client for yaml-language-server: open files, collect diagnostics.

Only what the tests need: initialize, settings (validation on, no schema store: offline), didOpen,
and the publishDiagnostics notifications the server sends back; requests from the server
(workspace/configuration, client/registerCapability, ...) are answered.
"""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

SETTINGS = {"yaml": {"validate": True, "schemaStore": {"enable": False}, "schemas": {}, "format": {"enable": False},
                     "hover": False, "completion": False, "customTags": []}}


class Server:
    def __init__(self, binary: Path, root: Path):
        self.proc = subprocess.Popen([str(binary), "--stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.diagnostics: dict[str, list[dict]] = {}
        self.published: dict[str, int] = {}  # uri -> how many publishes so far
        self.versions: dict[str, int] = {}
        self.responses: dict[int, dict] = {}
        self.cv = threading.Condition()
        self.next_id = 0
        threading.Thread(target=self._reader, daemon=True).start()
        self.request("initialize", {"processId": None, "rootUri": root.as_uri(), "capabilities": {
            "textDocument": {"publishDiagnostics": {}}, "workspace": {"configuration": True}}})
        self.notify("initialized", {})
        self.notify("workspace/didChangeConfiguration", {"settings": SETTINGS})

    def _send(self, msg: dict) -> None:
        body = json.dumps(msg).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def _reader(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            msg = json.loads(out.read(length))
            if "method" in msg and "id" in msg:  # a request from the server
                result = [SETTINGS["yaml"]] * len(msg.get("params", {}).get("items", [1])) \
                    if msg["method"] == "workspace/configuration" else None
                self._send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
            elif msg.get("method") == "textDocument/publishDiagnostics":
                with self.cv:
                    uri = msg["params"]["uri"]
                    self.diagnostics[uri] = msg["params"]["diagnostics"]
                    self.published[uri] = self.published.get(uri, 0) + 1
                    self.cv.notify_all()
            elif "id" in msg:
                with self.cv:
                    self.responses[msg["id"]] = msg
                    self.cv.notify_all()

    def request(self, method: str, params: dict, timeout: float = 60) -> dict:
        self.next_id += 1
        rid = self.next_id
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        with self.cv:
            if not self.cv.wait_for(lambda: rid in self.responses, timeout):
                raise TimeoutError(f"yaml-language-server did not answer {method} in {timeout} s")
            return self.responses.pop(rid)

    def notify(self, method: str, params: dict) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def diagnose(self, path: Path, text: str | None = None, timeout: float = 60) -> list[dict]:
        """Diagnostics of one file (its text on disk unless given): `diagnose_many` of that file alone."""
        return self.diagnose_many([(path, text)], timeout)[path]

    def diagnose_many(self, files: list[tuple[Path, str | None]], timeout: float = 60) -> dict[Path, list[dict]]:
        """Diagnostics of several files (each its text on disk unless given), sent together. A file
        already open gets the new text as a full-content change with a higher version (no close: a close
        publishes an empty list that could be mistaken for the answer); each answer is the newest publish
        after its text was sent, once the server has been quiet for a second (schema loading can publish
        twice). The quiet second is waited once for all the files, not once per file."""
        uris: dict[Path, str] = {}
        seen: dict[str, int] = {}
        for path, text in files:
            uri = uris[path] = path.resolve().as_uri()
            content = path.read_text() if text is None else text
            with self.cv:
                seen[uri] = self.published.get(uri, 0)
            self.versions[uri] = self.versions.get(uri, 0) + 1
            if self.versions[uri] == 1:
                self.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "yaml",
                                                                      "version": 1, "text": content}})
            else:
                self.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": self.versions[uri]},
                                                       "contentChanges": [{"text": content}]})

        def publishes() -> int:
            return sum(self.published.get(uri, 0) for uri in uris.values())

        with self.cv:
            for path, uri in uris.items():
                if not self.cv.wait_for(lambda: self.published.get(uri, 0) > seen[uri], timeout):
                    raise TimeoutError(f"no diagnostics for {path} in {timeout} s")
            while True:
                count = publishes()
                if not self.cv.wait_for(lambda: publishes() > count, 1.0):
                    return {path: self.diagnostics[uri] for path, uri in uris.items()}

    def close(self) -> None:
        try:
            self.request("shutdown", {}, timeout=10)
            self.notify("exit", {})
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()
