"""Local servers that stand in for remote services in tests, on loopback only.

- :mod:`trails.testing.servers.openai`: ``OpenAICompatibleServer``, embeddings and chat
  completions answered like OpenAI's API, for the real ``openai`` client;
- :mod:`trails.testing.servers.oxigraph`: ``OxigraphServer``, a real ``oxigraph serve``
  process, for remote knowledge graphs;
- :mod:`trails.testing.servers.virtuoso`: ``VirtuosoServer``, a throwaway Virtuoso 7 (Debian's
  ``virtuoso-opensource``), the second SPARQL server the graph contract runs on.

Each is imported on its own (``from trails.testing.servers.openai import ...``): this package
imports neither, so using one never loads the other.
"""
