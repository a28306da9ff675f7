"""One judge configuration for every library: the gateway they all call, its cache and its accounting."""
