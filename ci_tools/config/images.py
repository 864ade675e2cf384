"""Which container images the GPU runners may start: the policy's `images.allowed` (pure).

A recipe chooses its container, and the container gets `HF_TOKEN`; in a trusted sweep of a fork PR
the recipe is the fork's. Digest pinning says which bytes run, not whose: the allowlist names the
registries and repositories whose images may run at all. Patterns are `registry/repository`, with
`*` matching anything (`/` too), e.g. `docker.io/lmsysorg/sglang` or `nvcr.io/nvidia/*`. An image
reference is normalised as docker does: no registry means `docker.io`, and a Docker Hub name
without a namespace is `library/<name>`. `plan` and `config validate` check the policy of the
change; `runner run` checks the trusted checkout's (`--image-policy`), and so does `plan` of a fork's
commit in a trusted sweep (`plan --image-policy`), so a fork cannot allow its own registry.
"""

from __future__ import annotations

import fnmatch
import re

DOCKER_HUB = "docker.io"
_TAG = re.compile(r":[^/]+$")


def repository_of(image: str) -> str:
    """`registry/repository` of an image reference (tag and digest dropped)."""
    name = image.split("@", 1)[0]
    name = _TAG.sub("", name)
    first, _, rest = name.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        registry, path = first, rest
    else:
        registry, path = DOCKER_HUB, name
    if registry in (DOCKER_HUB, "index.docker.io", "registry-1.docker.io"):
        registry = DOCKER_HUB
        if "/" not in path:
            path = f"library/{path}"
    return f"{registry.lower()}/{path}"


def allowed(image: str, patterns: tuple[str, ...] | list[str]) -> bool:
    repo = repository_of(image)
    return any(fnmatch.fnmatchcase(repo, p) for p in patterns)


def problem(image: str, patterns: tuple[str, ...] | list[str] | None, policy_file: str) -> str | None:
    """Why `image` may not run, or None. `patterns` None: the policy names no allowlist."""
    if patterns is None:
        return no_allowlist(policy_file)
    if allowed(image, patterns):
        return None
    return (f"image {image!r} ({repository_of(image)}) is not on the image allowlist of {policy_file} "
            f"({', '.join(patterns)}); use an allowed image, or add its registry/repository to `images: allowed:` "
            "in a reviewed change of the policy")


def no_allowlist(policy_file: str) -> str:
    """Why nothing can be checked against a policy file that names no allowlist."""
    return (f"{policy_file} has no `images: allowed:` list, so no image can be checked; name the registries "
            "and repositories the GPU runners may pull")


def allowlist_of(data: object) -> tuple[str, ...] | None:
    """`images.allowed` of a parsed policy file (None when it has none)."""
    images = data.get("images") if isinstance(data, dict) else None
    listed = images.get("allowed") if isinstance(images, dict) else None
    return tuple(str(p) for p in listed) if isinstance(listed, list) else None
