"""Corpus endpoints under /api/ (included by argora/api_urls.py)."""

from django.urls import path
from rest_framework.authtoken.views import obtain_auth_token
from rest_framework.routers import SimpleRouter

from . import api

router = SimpleRouter()
router.register("topics", api.TopicViewSet, basename="topic")
router.register("sentences", api.SentenceViewSet, basename="sentence")
router.register("facts", api.FactVariableViewSet, basename="fact")
router.register("debates", api.DebateTreeViewSet, basename="debate")
router.register("releases", api.ReleaseViewSet, basename="release")

urlpatterns = [
    # POST username + password -> {"token": "..."}; send it back as "Authorization: Token <key>".
    path("auth/token/", obtain_auth_token, name="api-token"),
    *router.urls,
]
