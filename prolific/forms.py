"""The panel's study settings form (the checks that need Prolific's rules live in prolific.publishing)."""

from django import forms

from .models import ProlificStudy
from .publishing import EDITABLE


class StudySettingsForm(forms.ModelForm):
    class Meta:
        model = ProlificStudy
        fields = EDITABLE
        widgets = {
            "description": forms.Textarea(attrs={"rows": 3}),
            "rejection_message": forms.Textarea(attrs={"rows": 3}),
            "completed_actions": forms.Textarea(attrs={"rows": 2}),
            "screened_out_actions": forms.Textarea(attrs={"rows": 2}),
        }
