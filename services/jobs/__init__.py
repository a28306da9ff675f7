"""Long work as resumable jobs: a job is a list of items claimed by workers under a lease.

A worker that dies leaves its claimed items behind; once their lease expires another worker (or the same
service restarted) claims them again. Handlers write each result as soon as it is computed and skip what is
already stored, so a resumed job neither duplicates nor loses work.
"""
