"""HTTP layer of ragmeta: app factory, settings, dependencies, routers and schemas.

Every entry point of the application (the API and its embedded worker, ``ragmeta worker``, the demo)
imports this package first, so this is where every domain's job handlers are registered with the jobs
package; registering loads no handler code (they are made on their first batch).
"""

from services.workers import register_job_handlers

register_job_handlers()
