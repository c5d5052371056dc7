# The course site's Sphinx configuration, copied as it is into the site's source folder by
# ``python -m labkit run``. The notebooks arrive executed, so myst-nb only renders them.
project = "CUDA Graphs Lab"
html_title = "CUDA Graphs Lab"
extensions = ["myst_nb"]
nb_execution_mode = "off"
myst_enable_extensions = ["dollarmath"]
html_theme = "sphinx_book_theme"
html_theme_options = {
    "show_toc_level": 2,
    "use_download_button": True,
    "home_page_in_toc": True,
    "footer_content_items": [],    # no author or copyright line to show
}
# html_static_path: labkit run passes the packaged _static/ folder (-D), not a copy
html_css_files = ["labkit.css"]
html_last_updated_fmt = None
exclude_patterns = ["**.ipynb_checkpoints"]
# Course text is written for Jupyter, where a heading may skip a level.
suppress_warnings = ["myst.header"]
