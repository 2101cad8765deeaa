"""What a network face checks before a request reaches it, shared by every face.

The names a server answers to (`Host`, against DNS rebinding), whether an address stays
on this machine, secrets compared in constant time, the size of a body, and names from a
client checked before they reach the file system. Standard library only: `stepgraph
serve` and `stepgraph mcp` each install their own web stack as an extra, and neither may
need the other's to import this.
"""

from stepgraph.guards._hosts import AllowedHosts, is_loopback, split_host
from stepgraph.guards._names import file_part, path_problem
from stepgraph.guards._tokens import MAX_BODY, bearer_of, same_secret

__all__ = [
    "MAX_BODY",
    "AllowedHosts",
    "bearer_of",
    "file_part",
    "is_loopback",
    "path_problem",
    "same_secret",
    "split_host",
]
