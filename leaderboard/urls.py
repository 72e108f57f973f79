from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import path
from drf_spectacular.views import SpectacularAPIView

from leaderboard.accounts import apis as accounts_api
from leaderboard.accounts import views as accounts
from leaderboard.challenges import apis as challenges_api
from leaderboard.challenges import views as challenges
from leaderboard.rankings import apis as rankings_api
from leaderboard.rankings import views as rankings
from leaderboard.submissions import apis as submissions_api
from leaderboard.submissions import views as submissions

urlpatterns = [
    path("", challenges.home, name="home"),
    path("admin/", admin.site.urls),
    path("accounts/signup/", accounts.signup, name="signup"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/tokens/", accounts.api_tokens_page, name="api-tokens"),
    path("c/<slug:slug>/", challenges.challenge_detail, name="challenge"),
    path("c/<slug:slug>/team/", accounts.team_page, name="team"),
    path("c/<slug:slug>/data/", challenges.data_page, name="data"),
    path("c/<slug:slug>/data/starting-kit.zip", challenges.starting_kit, name="data-kit"),
    path("c/<slug:slug>/data/<slug:kind>/<slug:dataset_slug>/", challenges.data_file, name="data-file"),
    path("c/<slug:slug>/submit/", submissions.submit, name="submit"),
    path("c/<slug:slug>/submit/system/", submissions.submit_system, name="submit-system"),
    path("c/<slug:slug>/submissions/", submissions.submission_list, name="submission-list"),
    path("c/<slug:slug>/submissions/<int:pk>/", submissions.submission_detail, name="submission-detail"),
    path("c/<slug:slug>/submissions/<int:pk>/file/", submissions.submission_download, name="submission-download"),
    path("c/<slug:slug>/board/<slug:phase_slug>/", rankings.board_page, name="board"),
    path("c/<slug:slug>/board/<slug:phase_slug>/export.csv", rankings.board_csv, name="board-csv"),
    path("c/<slug:slug>/board/<slug:phase_slug>/export.json", rankings.board_json, name="board-json"),
    path("c/<slug:slug>/board/<slug:phase_slug>/chart.svg", rankings.board_chart, name="board-chart"),
    # Everything, for the challenge's organizers only (404 to anyone else); never to be shared.
    path("c/<slug:slug>/board/<slug:phase_slug>/organizer/", rankings.board_organizer_page, name="board-organizer"),
    path("c/<slug:slug>/board/<slug:phase_slug>/organizer/export.csv", rankings.board_organizer_csv,
         name="board-organizer-csv"),
    path("c/<slug:slug>/board/<slug:phase_slug>/organizer/export.json", rankings.board_organizer_json,
         name="board-organizer-json"),
    path("c/<slug:slug>/board/<slug:phase_slug>/organizer/chart.svg", rankings.board_organizer_chart,
         name="board-organizer-chart"),
    path("api/v1/auth/token/", accounts_api.TokenApi.as_view(), name="api-token"),
    path("api/v1/auth/token/rotate/", accounts_api.TokenRotateApi.as_view(), name="api-token-rotate"),
    path("api/v1/challenges/", rankings_api.ChallengeListApi.as_view(), name="api-challenges"),
    path("api/v1/challenges/<slug:slug>/", rankings_api.ChallengeDetailApi.as_view(), name="api-challenge"),
    path("api/v1/challenges/<slug:slug>/data/", challenges_api.DataListApi.as_view(), name="api-data"),
    path("api/v1/challenges/<slug:slug>/data/starting-kit.zip", challenges_api.StartingKitApi.as_view(),
         name="api-data-kit"),
    path("api/v1/challenges/<slug:slug>/data/<slug:kind>/<slug:dataset_slug>/", challenges_api.DataFileApi.as_view(),
         name="api-data-file"),
    path(
        "api/v1/challenges/<slug:slug>/phases/<slug:phase_slug>/leaderboard/",
        rankings_api.LeaderboardApi.as_view(),
        name="api-leaderboard",
    ),
    path(
        "api/v1/challenges/<slug:slug>/submissions/",
        submissions_api.SubmissionListCreateApi.as_view(),
        name="api-submissions",
    ),
    path(
        "api/v1/challenges/<slug:slug>/systems/",
        submissions_api.SystemCreateApi.as_view(),
        name="api-systems",
    ),
    path("api/v1/submissions/<int:pk>/log/", submissions_api.SubmissionLogApi.as_view(), name="api-submission-log"),
    path("api/v1/submissions/<int:pk>/", submissions_api.SubmissionDetailApi.as_view(), name="api-submission"),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
]

handler404 = "leaderboard.core.views.not_found"
handler500 = "leaderboard.core.views.server_error"
