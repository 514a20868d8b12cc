"""A site's templates' output of built-in kinds, checked against Kubernetes' own schema.

gpuconf's shipped templates write built-in kinds (DaemonSet, ConfigMap, ResourceQuota, …) that
the tests check against kubernetes-validate's strict schemas, so a render that overrides nothing
checks them no further. Where a site's template shapes the output, it is checked against the
vendored schema of its apiVersion and kind (kubernetes_schema.py) before anything is written,
as an API server with strict field validation would: a wrong type or a misspelt field is refused
at the template line that wrote it, not at `kubectl apply`. Kinds defined by a CRD are checked
for every template already (check.py).
"""

from __future__ import annotations

from gpuconf.compiler.plan.artifact import Artifact
from gpuconf.compiler.templating.check import refused_at, schema_failure
from gpuconf.compiler.templating.engine import Templates, TemplateSource
from gpuconf.compiler.templating.kubernetes_schema import (
    kubernetes_validator,
    vendored_kinds,
    vendored_release,
)
from gpuconf.formats.located_yaml import parse_text


class OverriddenOutputs:
    """Checks, for one render, the output of each template a site's file takes part in."""

    def __init__(self, templates: Templates) -> None:
        self.templates = templates
        self._overridden: dict[str, bool] = {}
        """By template name: whether a site's file is in what makes it."""

    def overridden(self, name: str) -> bool:
        """Whether a site's file takes part in template `name`. Templates of built-in kinds
        include and import nothing, only extend, so their chain names every file that shapes
        them (a site's file reached by a site's include is reached from one in the chain)."""
        found = self._overridden.get(name)
        if found is None:
            chain = self.templates.chain(name)
            found = self._overridden[name] = any(
                self.templates.overridden(source.name) for source in chain
            )
        return found

    def check(self, artifact: Artifact, output: bytes) -> None:
        """Raises TemplateFailed where a site's template wrote a built-in kind its schema refuses."""
        if self.templates.overrides is None or not artifact.kind:
            return
        if not self.overridden(artifact.template):
            return
        kind = artifact.kind
        served = [api_version for api_version, known in vendored_kinds() if known == kind]
        if not served:
            return  # a CRD's kind, checked against its CRD's schema for every template
        data = parse_text(output.decode("utf-8"), "output").data
        api_version = data.get("apiVersion")
        validator = kubernetes_validator(api_version, kind) if api_version in served else None
        if validator is not None and validator.is_valid(data):
            return
        # Refused: render the values in place once more, so each key path has its line.
        name = artifact.template
        text = self.templates.render(name, artifact.values)
        located = parse_text(text, "output")

        def chain() -> list[TemplateSource]:
            return self.templates.chain(name)

        release = vendored_release()
        if validator is None:
            message = (
                f"apiVersion: a {kind} must be {' or '.join(served)} (the versions gpuconf has"
                f" Kubernetes {release}'s schema of), not {api_version!r}"
            )
            raise refused_at(located, ("apiVersion",), message, text, chain)
        source = f"Kubernetes {release}'s {kind} schema"
        failure = schema_failure(located, validator, source, text, chain)
        if failure is not None:
            raise failure
