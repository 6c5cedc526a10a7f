build2/obj/src/cli/mcp.o: src/cli/mcp.c src/cli/cli.h src/util/util.h \
 include/coffer.h
src/cli/cli.h:
src/util/util.h:
include/coffer.h:
