# IPython kernel configuration for the PDF build only (make pdf copies it to
# _build/ipython/profile_default/ and points IPYTHONDIR there): the chapters' figures are
# rendered at 300 dpi, so that every figure of the PDF has at least 300 pixels per inch at its
# printed size (matplotlib writes the dpi into the PNG, so the printed size is unchanged).
c = get_config()  # noqa: F821 (IPython's config loader provides it)
c.InlineBackend.print_figure_kwargs = {"bbox_inches": "tight", "dpi": 300}
c.HistoryManager.enabled = False
