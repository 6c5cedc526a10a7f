build2/obj/src/http/openapi.o: src/http/openapi.c src/http/http.h \
 include/coffer.h src/util/util.h build2/gen/openapi_json.inc
src/http/http.h:
include/coffer.h:
src/util/util.h:
build2/gen/openapi_json.inc:
