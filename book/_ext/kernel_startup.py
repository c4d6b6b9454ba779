# IPython startup file of the kernels that execute the chapters for the website and the PDF
# (copied into the build's IPython profile, profile_default/startup/, by book/_ext/
# coursework_book.py for the website and by `make pdf`; the notebooks are unchanged).
#
# The code and output blocks of the website and the PDF hold 88 characters.  pandas prints a
# DataFrame as several column blocks, each repeating the row labels (with a "\" after the
# header of every block but the last), as soon as it is wider than display.width - 2, and
# the lines of those blocks can be as wide as display.width.  So the kernels print a
# DataFrame whole when it fits 88 characters, and in blocks of at most 88 characters when
# it does not.


def _book_dataframe_text(frame, printer, cycle):
    from pandas.io.formats import format as fmt

    params = fmt.get_dataframe_repr_params()
    whole = frame.to_string(**dict(params, line_width=None))
    if max((len(line.rstrip()) for line in whole.splitlines()), default=0) <= 88:
        printer.text(whole)
    else:
        printer.text(frame.to_string(**dict(params, line_width=88)))


try:
    import pandas as _pd
except ImportError:  # a chapter that needs pandas says so itself
    pass
else:
    _pd.set_option("display.width", 88)
    _pd.set_option("display.max_columns", 40)
    get_ipython().display_formatter.formatters["text/plain"].for_type(  # noqa: F821
        _pd.DataFrame, _book_dataframe_text)
    del _pd
