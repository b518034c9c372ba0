"""Serving sqlscout: the eight tools and the agent over HTTP (``sqlscout serve``) and MCP
(``sqlscout mcp``).

The core here needs no web framework: :class:`Catalog` (the databases, by name),
:class:`ToolService` (tool calls and scoring under deadlines), :class:`AskService` (the
agent over one shared model). The protocol layers import their libraries (the
``serve`` extra: fastapi, uvicorn, mcp) only when used:
:func:`sqlscout.serve.http_api.create_app` and :func:`sqlscout.serve.mcp_server.build_server`.
"""

from sqlscout.serve.ask import AskRequest, AskService
from sqlscout.serve.catalog import Catalog, DatabaseSpec, parse_database_spec
from sqlscout.serve.config import ServeConfig
from sqlscout.serve.tools import ToolDefinition, ToolService, tool_definitions

__all__ = [
    "AskRequest",
    "AskService",
    "Catalog",
    "DatabaseSpec",
    "ServeConfig",
    "ToolDefinition",
    "ToolService",
    "parse_database_spec",
    "tool_definitions",
]
