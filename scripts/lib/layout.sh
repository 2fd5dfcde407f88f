# The package as it installs, for tools that read source rather than an installed package
# (import-linter, mypy): memlife/, with workflows/ and activities/ inside it (setuptools
# maps them there, pyproject.toml), and bench/ beside it. Sourced by scripts/lint-imports
# and scripts/typecheck: `layout_tree` makes a temporary tree of links, removed on exit.
layout_tree() {
  local root="$1"
  tree=$(mktemp -d)
  trap 'rm -rf "$tree"' EXIT
  mkdir "$tree/memlife"
  for entry in "$root"/memlife/*; do ln -s "$entry" "$tree/memlife/"; done
  ln -s "$root/workflows" "$tree/memlife/workflows"
  ln -s "$root/activities" "$tree/memlife/activities"
  ln -s "$root/bench" "$tree/bench"
}
