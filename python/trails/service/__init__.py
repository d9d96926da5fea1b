"""``trails serve``: one context behind HTTP (and, for agents, MCP), with API keys that grant
scopes and rights.

:mod:`trails.service.keys` (API keys) and :mod:`trails.service.discovery` (``service.json``)
load without the ``service`` extra; the HTTP application (:mod:`trails.service.app`,
:func:`trails.service.runner.serve`) needs FastAPI, uvicorn and prometheus-client, which
``trails serve`` loads only when it runs. docs/service.md describes the service.
"""
