"""HTTP layer of ragmeta: app factory, settings, dependencies, routers and schemas."""
