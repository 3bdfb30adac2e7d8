"""A small documentation folder (reStructuredText and Markdown) with nested sections."""

from pathlib import Path

API_RST = """\
API
===

The application object and its helpers.

Application Object
------------------

The ``App`` class is the central object. Create one per project and register views on it.
It keeps the configuration and the view functions together for the whole project.

Signals
-------

Signals let parts of a program learn that something happened elsewhere in it.

Sending Signals
~~~~~~~~~~~~~~~

Call ``signal.send(sender)`` to notify every receiver that is connected right now.

Receiving Signals
~~~~~~~~~~~~~~~~~

Connect a receiver with ``signal.connect(func)``; it is called with the sender each time.
"""

DEPLOY_MD = """\
---
title: Deploying
tags: [ops, servers]
---

Deploy the application behind a real web server, never the development one.

## Servers

Gunicorn and uWSGI both serve the application well; pick one that the hosting supports.

## Signals in production

Receivers connected at import time stay connected in every worker process.
"""


def write_docs(folder: Path) -> Path:
    """Write the documentation folder under ``folder`` and return it."""
    (folder / "deploying").mkdir(parents=True, exist_ok=True)
    (folder / "api.rst").write_text(API_RST)
    (folder / "deploying" / "index.md").write_text(DEPLOY_MD)
    return folder
