"""The thread a process activity's call runs in, for Python programs.

toolhost gives each call of a process activity made in a thread a channel to the thread's
state: a Unix socket at the file descriptor named by the environment variable
TOOLHOST_STATE_FD, carrying one JSON line per request and one per answer. This module is a
small client of it, with no dependencies; copy it next to your activity.

    import json, sys
    from toolhost_state import ThreadState

    call = json.load(sys.stdin)
    state = ThreadState()
    visits = (state.get_value("visits") or 0) + 1
    state.set_value("visits", visits)
    print(json.dumps({"status": "success", "result": f"visit {visits}"}))

Every method raises ToolhostError with toolhost's message when a request is refused.
"""

import base64
import json
import os
import socket


class ToolhostError(Exception):
    """A request toolhost refused; the message says why."""


class ThreadState:
    """The state of the thread the current call runs in."""

    def __init__(self):
        fd = os.environ.get("TOOLHOST_STATE_FD")
        if fd is None:
            raise ToolhostError(
                "no ThreadState channel: this program is not running as a call of a toolhost "
                "process activity in a thread"
            )
        self._socket = socket.socket(fileno=int(fd))
        self._stream = self._socket.makefile("rwb")
        self._last_id = 0

    def _ask(self, op, **fields):
        self._last_id += 1
        request = {"id": self._last_id, "op": op, **fields}
        self._stream.write(json.dumps(request).encode() + b"\n")
        self._stream.flush()
        line = self._stream.readline()
        if not line:
            raise ToolhostError("toolhost closed the ThreadState channel")
        answer = json.loads(line)
        if not answer.get("ok"):
            raise ToolhostError(answer.get("error", "refused"))
        return answer.get("value")

    def get_value(self, key):
        """The thread's durable value under key, or None."""
        return self._ask("getValue", key=key)

    def set_value(self, key, value):
        """Stores a durable value; None deletes it."""
        self._ask("setValue", key=key, value=value)

    def read_file(self, path):
        """The bytes of a file of the thread's file system."""
        return base64.b64decode(self._ask("readFile", path=path))

    def write_file(self, path, data, mime_type=None):
        """Writes a file (bytes or text) and returns its normalised path."""
        if isinstance(data, str):
            data = data.encode()
        fields = {"path": path, "data": base64.b64encode(data).decode()}
        if mime_type is not None:
            fields["mimeType"] = mime_type
        return self._ask("writeFile", **fields)

    def readdir(self, path):
        """The entries of a folder, each a dict with path, is_folder, size, mime_type."""
        return self._ask("readdir", path=path)

    def stat(self, path):
        """What is at path (a dict), or None."""
        return self._ask("stat", path=path)

    def emit(self, event, data=None):
        """Records an event on the thread (emitThreadEvent)."""
        self._ask("emitThreadEvent", event=event, data=data)

    def queue_tool(self, name, arguments=None):
        """Queues a call of a tool before the next model step (queueTool)."""
        self._ask("queueTool", name=name, arguments=arguments or {})

    def progress(self, progress, total=None, message=None):
        """Says how far the call is: progress so far, out of total when known (live only, passed
        on to an MCP client that asked for progress)."""
        fields = {"progress": progress}
        if total is not None:
            fields["total"] = total
        if message is not None:
            fields["message"] = message
        self._ask("progress", **fields)
