"""Rating tasks: who rates which outputs in which order, the raters' queues, and the editors' dashboard."""
