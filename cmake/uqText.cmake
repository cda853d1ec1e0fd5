# uq_text_lines(<out> <text>): a tool's text output as a CMake list of its lines, with the
# characters a list would misread (';' and the brackets) replaced ('[' ']' -> '(' ')', ';' -> ',').
# Used by the script-mode checks that read llvm-readelf / llvm-objdump output.
function(uq_text_lines out text)
  string(REPLACE ";" "," text "${text}")
  string(REPLACE "[" "(" text "${text}")
  string(REPLACE "]" ")" text "${text}")
  string(REPLACE "\n" ";" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()
