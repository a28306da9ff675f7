"""A report's presentation: the HTML page, the figures, Markdown, the terminal's text and the estimate's
sections, each rendered from the typed values the analysis modules of ``services.reports`` compute
(the data read, the statistics assembled, the cache); nothing here reads the store."""
