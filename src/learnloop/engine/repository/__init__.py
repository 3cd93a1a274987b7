"""The content repository: items, annotations, catalogs, their compiled forms and what each content write touched."""
