from django.core.management.base import BaseCommand

from annotation import services


class Command(BaseCommand):
    help = "Return reservations past their timeout to the pool."

    def handle(self, *args, **options):
        n = services.expire_reservations()
        self.stdout.write(f"expired {n} reservation(s)")
