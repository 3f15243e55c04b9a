"""fwdbench: benchmark software data planes the way RFC 2544 testers do."""

__version__ = "0.1.0"
