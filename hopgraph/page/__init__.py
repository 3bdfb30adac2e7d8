"""The page (``hopgraph ui``): one HTML page over an index, served by Starlette on 127.0.0.1.

- ``server``: the routes, their guard (Host, Origin, token) and the generation each request reads;
- ``html``: the page itself (markup, style, script; no file fetched from elsewhere);
- ``queries``: a search, an evidence graph and an index's description as JSON;
- ``answers``: Ask, streamed as the agent runs;
- ``formatting``: passages, code and tables as the page shows them.
"""
