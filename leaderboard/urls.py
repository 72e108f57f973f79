from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import URLPattern, URLResolver, path
from drf_spectacular.views import SpectacularAPIView

from leaderboard.accounts import apis as accounts_api
from leaderboard.accounts import views as accounts
from leaderboard.accounts.forms import ThrottledAdminAuthenticationForm
from leaderboard.challenges import apis as challenges_api
from leaderboard.challenges import views as challenges
from leaderboard.console import apis as console_api
from leaderboard.console import views as console
from leaderboard.console.views import rounds as console_rounds
from leaderboard.core import views as core
from leaderboard.judging import views as judging
from leaderboard.rankings import apis as rankings_api
from leaderboard.rankings import views as rankings
from leaderboard.submissions import apis as submissions_api
from leaderboard.submissions import internal_views as internal
from leaderboard.submissions import views as submissions

# The admin's login goes through the same failure throttle as the site's.
admin.site.login_form = ThrottledAdminAuthenticationForm

site_urlpatterns: list[URLPattern | URLResolver] = [
    path("", challenges.home, name="home"),
    path("admin/", admin.site.urls),
    path("accounts/signup/", accounts.signup, name="signup"),
    path("accounts/login/", accounts.LoginView.as_view(), name="login"),
    path("accounts/confirm/send/", accounts.email_confirm_resend, name="email-confirm-resend"),
    path("accounts/confirm/<str:token>/", accounts.email_confirm, name="email-confirm"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/profile/", accounts.profile, name="profile"),
    path("accounts/invites/<int:pk>/", accounts.invite_respond, name="invite-respond"),
    path("accounts/tokens/", accounts.api_tokens_page, name="api-tokens"),
    # Django's reset views; template names of our own, since the admin app's registration/*
    # templates come first in the app-directories search.
    path("accounts/password-reset/", auth_views.PasswordResetView.as_view(
        template_name="accounts/password_reset_form.html",
        email_template_name="accounts/password_reset_email.txt",
        subject_template_name="accounts/password_reset_subject.txt",
    ), name="password_reset"),
    path("accounts/password-reset/sent/", auth_views.PasswordResetDoneView.as_view(
        template_name="accounts/password_reset_done.html"), name="password_reset_done"),
    path("accounts/password-reset/<uidb64>/<token>/", auth_views.PasswordResetConfirmView.as_view(
        template_name="accounts/password_reset_confirm.html"), name="password_reset_confirm"),
    path("accounts/password-reset/done/", auth_views.PasswordResetCompleteView.as_view(
        template_name="accounts/password_reset_complete.html"), name="password_reset_complete"),
    path("accounts/password-change/", auth_views.PasswordChangeView.as_view(
        template_name="accounts/password_change_form.html"), name="password_change"),
    path("accounts/password-change/done/", auth_views.PasswordChangeDoneView.as_view(
        template_name="accounts/password_change_done.html"), name="password_change_done"),
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
    # The overview paper's tables, ?format=latex|csv|md: built from the same board, so no more than it shows.
    path("c/<slug:slug>/board/<slug:phase_slug>/paper/", rankings.board_paper, name="board-paper"),
    # Budget tracks and the cost-versus-score charts: from the same board, with each run's figures.
    path("c/<slug:slug>/board/<slug:phase_slug>/budgets/", rankings.board_budgets, name="board-budgets"),
    # Everything, for the challenge's organizers only (404 to anyone else); never to be shared.
    path("c/<slug:slug>/board/<slug:phase_slug>/organizer/", rankings.board_organizer_page, name="board-organizer"),
    path("c/<slug:slug>/board/<slug:phase_slug>/organizer/export.csv", rankings.board_organizer_csv,
         name="board-organizer-csv"),
    path("c/<slug:slug>/board/<slug:phase_slug>/organizer/export.json", rankings.board_organizer_json,
         name="board-organizer-json"),
    path("c/<slug:slug>/board/<slug:phase_slug>/organizer/chart.svg", rankings.board_organizer_chart,
         name="board-organizer-chart"),
    path("c/<slug:slug>/board/<slug:phase_slug>/organizer/paper/", rankings.board_organizer_paper,
         name="board-organizer-paper"),
    path("c/<slug:slug>/board/<slug:phase_slug>/organizer/budgets/", rankings.board_organizer_budgets,
         name="board-organizer-budgets"),
    # The organizer console: the challenge's organizers only (404 to anyone else).  An action's
    # address shows what it will do (GET) and does it (POST, with a reason).
    path("c/<slug:slug>/console/", console.console_home, name="console"),
    path("c/<slug:slug>/console/submissions/", console.console_submissions_page, name="console-submissions"),
    path("c/<slug:slug>/console/queue/", console.console_queue_page, name="console-queue"),
    path("c/<slug:slug>/console/teams/", console.console_teams_page, name="console-teams"),
    path("c/<slug:slug>/console/audit/", console.console_audit_page, name="console-audit"),
    path("c/<slug:slug>/console/integrity/", console.console_integrity_page, name="console-integrity"),
    path("c/<slug:slug>/console/campaigns/", console.console_campaigns_page, name="console-campaigns"),
    path("c/<slug:slug>/console/judging/", console_rounds.console_rounds_page, name="console-rounds"),
    path("c/<slug:slug>/console/judging/new/", console_rounds.console_round_new_page, name="console-round-new"),
    path("c/<slug:slug>/console/judging/<int:round_id>/", console_rounds.console_round_page, name="console-round"),
    path("c/<slug:slug>/console/judging/<int:round_id>/adjudicate/<int:candidate_id>/",
         console_rounds.console_round_adjudicate, name="console-round-adjudicate"),
    path("c/<slug:slug>/console/judging/<int:round_id>/results/", console_rounds.console_round_results_page,
         name="console-round-results"),
    path("c/<slug:slug>/console/judging/<int:round_id>/download/<str:name>", console_rounds.console_round_download,
         name="console-round-download"),
    path("c/<slug:slug>/console/announce/", console.console_action_page,
         {"target": "challenge", "key": "", "action": "announce"}, name="console-announce"),
    path("c/<slug:slug>/console/<slug:target>/<str:key>/<slug:action>/", console.console_action_page,
         name="console-action"),
    # A judge's page of a human evaluation round: the round's judges only (404 to anyone else).
    path("c/<slug:slug>/judge/<int:round_id>/", judging.judge_page, name="judge"),
    path("api/v1/auth/token/", accounts_api.TokenApi.as_view(), name="api-token"),
    path("api/v1/auth/token/rotate/", accounts_api.TokenRotateApi.as_view(), name="api-token-rotate"),
    path("api/v1/auth/tokens/", accounts_api.TokenListApi.as_view(), name="api-tokens-list"),
    path("api/v1/auth/tokens/<int:pk>/", accounts_api.TokenDetailApi.as_view(), name="api-tokens-detail"),
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
    path("api/v1/challenges/<slug:slug>/console/submissions/", console_api.ConsoleSubmissionsApi.as_view(),
         name="api-console-submissions"),
    path("api/v1/challenges/<slug:slug>/console/queue/", console_api.ConsoleQueueApi.as_view(),
         name="api-console-queue"),
    path("api/v1/challenges/<slug:slug>/console/teams/", console_api.ConsoleTeamsApi.as_view(),
         name="api-console-teams"),
    path("api/v1/challenges/<slug:slug>/console/audit/", console_api.ConsoleAuditApi.as_view(),
         name="api-console-audit"),
    path("api/v1/challenges/<slug:slug>/console/announcements/", console_api.ConsoleAnnouncementsApi.as_view(),
         name="api-console-announcements"),
    path("api/v1/challenges/<slug:slug>/console/<slug:target>/<str:key>/<slug:action>/",
         console_api.ConsoleActionApi.as_view(), name="api-console-action"),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
]

# Compute workers only (a worker token; see leaderboard/submissions/internal_views.py).  Which of the two
# sets a process mounts is settings.SERVE: a deployment's public process mounts no /internal/ and its
# internal process, on an address only compute hosts reach, nothing of the site (no login, no admin).
internal_urlpatterns: list[URLPattern | URLResolver] = [
    path("internal/v1/runs/claim/", internal.run_claim, name="internal-run-claim"),
    path("internal/v1/runs/wait/", internal.run_wait, name="internal-run-wait"),
    path("internal/v1/runs/<int:submission_id>/<int:attempt>/inputs/", internal.run_inputs,
         name="internal-run-inputs"),
    path("internal/v1/runs/<int:submission_id>/<int:attempt>/inputs/<int:index>/", internal.run_input,
         name="internal-run-input"),
    path("internal/v1/runs/<int:submission_id>/<int:attempt>/system/", internal.run_system_file,
         name="internal-run-system"),
    path("internal/v1/runs/<int:submission_id>/<int:attempt>/dialogs/", internal.run_dialog_turn,
         name="internal-run-dialog-turn"),
    path("internal/v1/runs/<int:submission_id>/<int:attempt>/heartbeat/", internal.run_heartbeat,
         name="internal-run-heartbeat"),
    path("internal/v1/runs/<int:submission_id>/<int:attempt>/log/", internal.run_live_log,
         name="internal-run-live-log"),
    path("internal/v1/runs/<int:submission_id>/<int:attempt>/outcome/", internal.run_outcome,
         name="internal-run-outcome"),
    path("internal/v1/runs/<int:submission_id>/<int:attempt>/failure/", internal.run_failure,
         name="internal-run-failure"),
]
health_urlpatterns: list[URLPattern | URLResolver] = [path("healthz", core.health, name="health")]

urlpatterns = health_urlpatterns
if settings.SERVE in {"public", "all"}:
    urlpatterns = urlpatterns + site_urlpatterns
if settings.SERVE in {"internal", "all"}:
    urlpatterns = urlpatterns + internal_urlpatterns

handler403 = "leaderboard.core.views.permission_denied"
handler404 = "leaderboard.core.views.not_found"
handler500 = "leaderboard.core.views.server_error"
