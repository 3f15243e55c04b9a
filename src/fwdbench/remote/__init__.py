"""A DUT host reached over SSH: the connection (ssh.py), the executor that runs
every side effect there (executor.py), fwdbench's programs copied there
(tools.py), and what a run leaves there and how a later run removes it
(leftovers.py). The ``ssh`` testbed (testbed/ssh.py) puts them together."""
from .executor import RemoteExecutor, RemoteProcess
from .ssh import SshConnection, SshConnectionLost, SshError, SshTarget

__all__ = ["RemoteExecutor", "RemoteProcess", "SshConnection", "SshConnectionLost",
           "SshError", "SshTarget"]
