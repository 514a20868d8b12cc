"""Output checked against its kind's schema where the tests cannot have checked it.

gpuconf's shipped templates, given values gpuconf validated, write manifests the tests check
against their kinds' schemas for every cluster in clusters/ and the examples: built-in kinds
against kubernetes-validate's strict schemas, CRD kinds (PodMonitor, PrometheusRule, Argo CD,
Flux) against their vendored CRDs. A render of those checks them no further (jsonschema's import
alone costs a render a third of its floor). Two outputs are checked here, before anything is
written, as an API server with strict field validation would: what a site's template shapes,
and what carries input no gpuconf schema checked (`Artifact.outside_input`: `gpuconf gitops`'s
command-line values). A wrong type or a misspelt field is refused at the template line that
wrote it, not at `kubectl apply`; so are the rules the API server holds of its metadata and pod
spec beyond the schemas (server_rules.py).
"""

from __future__ import annotations

from typing import Any

from gpuconf.compiler.plan.artifact import Artifact
from gpuconf.compiler.templating.check import (
    crd_validator,
    failure_at,
    refused_at,
    schema_failure,
)
from gpuconf.compiler.templating.engine import Templates, TemplateSource
from gpuconf.compiler.templating.kubernetes_schema import (
    kubernetes_validator,
    vendored_kinds,
    vendored_release,
)
from gpuconf.diagnostics import format_path
from gpuconf.formats.located_yaml import parse_text


class OutputSchemas:
    """Checks, for one render, the output of each template a site's file takes part in and of
    each artifact with input from outside."""

    def __init__(self, templates: Templates) -> None:
        self.templates = templates

    def check(self, artifact: Artifact, output: bytes) -> None:
        """Raises TemplateFailed where such output is refused by its kind's schema."""
        if not artifact.kind:
            return
        if not artifact.outside_input and not self.templates.site_shaped(artifact.template):
            return
        # Only for output a site shapes: gpuconf's own is applied to kube-apiserver itself by
        # tests/control_plane.
        from gpuconf.compiler.templating.server_rules import problems

        kind = artifact.kind
        data = parse_text(output.decode("utf-8"), "output").data
        api_version = data.get("apiVersion")
        served = [version for version, known in vendored_kinds() if known == kind]
        validator: Any
        if served:
            release = vendored_release()
            source = f"Kubernetes {release}'s {kind} schema"
            validator = kubernetes_validator(api_version, kind) if api_version in served else None
        else:
            source = f"the {kind} CRD's schema"
            validator = crd_validator(api_version, kind)
            if validator is None:
                return  # no schema here (Kueue's kinds: kueue_check, with the declared release's)
        if (
            validator is not None
            and validator.is_valid(data)
            and next(problems(data), None) is None
        ):
            return
        # Refused: render the values in place once more, so each key path has its line.
        name = artifact.template
        text = self.templates.render(name, artifact.values)
        located = parse_text(text, "output")

        def chain() -> list[TemplateSource]:
            return self.templates.chain(name)

        if validator is None:
            message = (
                f"apiVersion: a {kind} must be {' or '.join(served)} (the versions gpuconf has"
                f" Kubernetes {vendored_release()}'s schema of), not {api_version!r}"
            )
            raise refused_at(located, ("apiVersion",), message, text, chain)
        failure = schema_failure(located, validator, source, text, chain)
        if failure is not None:
            raise failure
        for problem in problems(located.data):
            message = f"{format_path(problem.path)}: {problem.message} (kube-apiserver refuses it)"
            raise failure_at(
                located, problem.path, problem.value, message, text, chain, problem.hint
            )
