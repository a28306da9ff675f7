"""HTTP layer of ragmeta: app factory, settings, dependencies, routers and schemas.

Importing this package loads nothing of the service: ``python -m app.cli`` is a client that starts in a
fraction of a second. Every process that runs jobs registers the domains' job handlers when it opens its
resources (``services.resources.Resources.open``).
"""
