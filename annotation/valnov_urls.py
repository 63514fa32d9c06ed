"""URL patterns of one feature; included at the end of annotation/urls.py (namespace "annotation")."""
urlpatterns: list = []
