# Fails unless README contains the lines of SOURCE between "// [readme]" and "// [/readme]",
# unindented by two spaces: the README's code is the code that is compiled and run.
file(READ "${SOURCE}" source)
file(READ "${README}" readme)
if(NOT source MATCHES "// \\[readme\\]\n(.*)\n  // \\[/readme\\]")
  message(FATAL_ERROR "${SOURCE}: no // [readme] ... // [/readme] block")
endif()
# The match starts with the first line's indent: "\n" in front makes every line alike (a "^" in
# REGEX REPLACE would match again after each replacement).
string(REPLACE "\n  " "\n" snippet "\n${CMAKE_MATCH_1}")
string(SUBSTRING "${snippet}" 1 -1 snippet)
string(FIND "${readme}" "${snippet}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${README} does not show this part of ${SOURCE} as it is:\n${snippet}")
endif()
