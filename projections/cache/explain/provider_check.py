"""The provider's own diagnosis beside the engine's: each result carries its request's diagnosis and
client version, and a diagnosis the bytes contradict becomes a ``provider-disagrees`` finding."""

from __future__ import annotations

from collections.abc import Sequence

from projections.cache.explain.warnings import provider_disagrees
from projections.cache.results import Finding, RequestResult, finding_of
from projections.normalized import RequestRecord
from projections.providers.diagnosis import engine_tier


def note_provider_diagnoses(
    records: Sequence[RequestRecord], results: Sequence[RequestResult], findings: list[Finding]
) -> None:
    """Put each request's ``provider_diagnosis`` and ``client_version`` in its result's data, and
    add a finding for each diagnosis that disagrees with the first change the bytes show.

    Only a request whose bytes were compared with a previous request of its lineage can disagree:
    without bytes, or without a previous request, the engine has no first change to set against
    the provider's.
    """
    by_key = {record.key: record for record in records}
    for result in results:
        record = by_key.get(result.key)
        if record is None:
            continue
        diagnosis = record.provider_diagnosis
        result.data["provider_diagnosis"] = None if diagnosis is None else diagnosis.to_json()
        result.data["client_version"] = record.client_version
        compared = result.data.get("previous") is not None and result.data.get("cacheability") is not None
        if diagnosis is None or not compared:
            continue
        tier = engine_tier(result.data.get("first_change"))
        place = f"{record.lineage}: {diagnosis.reason} vs {tier or 'identical prefix'}"
        warning = provider_disagrees(result.key, place, diagnosis, tier)
        if warning is not None:
            findings.append(finding_of(warning))
