eintune: einsum: '-' that is not part of an arrow '->'
  ij-
    ^
