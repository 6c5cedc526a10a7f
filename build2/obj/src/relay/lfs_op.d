build2/obj/src/relay/lfs_op.o: src/relay/lfs_op.c src/relay/localfs.h \
 include/coffer.h src/policy/policy.h src/util/util.h
src/relay/localfs.h:
include/coffer.h:
src/policy/policy.h:
src/util/util.h:
