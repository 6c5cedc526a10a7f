build2/obj/src/agent/media.o: src/agent/media.c \
 /usr/include/poppler/glib/poppler.h \
 /usr/include/poppler/glib/poppler-macros.h \
 /usr/include/poppler/glib/poppler-features.h \
 /usr/include/poppler/glib/poppler-document.h \
 /usr/include/poppler/glib/poppler.h \
 /usr/include/poppler/glib/poppler-page.h /usr/include/cairo/cairo.h \
 /usr/include/cairo/cairo-version.h /usr/include/cairo/cairo-features.h \
 /usr/include/cairo/cairo-deprecated.h \
 /usr/include/poppler/glib/poppler-layer.h \
 /usr/include/poppler/glib/poppler-action.h \
 /usr/include/poppler/glib/poppler-form-field.h \
 /usr/include/poppler/glib/poppler-enums.h \
 /usr/include/poppler/glib/poppler-attachment.h \
 /usr/include/poppler/glib/poppler-annot.h \
 /usr/include/poppler/glib/poppler-date.h \
 /usr/include/poppler/glib/poppler-movie.h \
 /usr/include/poppler/glib/poppler-media.h \
 /usr/include/poppler/glib/poppler-structure-element.h src/agent/agent.h \
 src/volume/volume.h src/store/store.h include/coffer.h src/store/blob.h \
 src/store/meta.h src/util/util.h src/store/notify.h src/policy/policy.h
/usr/include/poppler/glib/poppler.h:
/usr/include/poppler/glib/poppler-macros.h:
/usr/include/poppler/glib/poppler-features.h:
/usr/include/poppler/glib/poppler-document.h:
/usr/include/poppler/glib/poppler.h:
/usr/include/poppler/glib/poppler-page.h:
/usr/include/cairo/cairo.h:
/usr/include/cairo/cairo-version.h:
/usr/include/cairo/cairo-features.h:
/usr/include/cairo/cairo-deprecated.h:
/usr/include/poppler/glib/poppler-layer.h:
/usr/include/poppler/glib/poppler-action.h:
/usr/include/poppler/glib/poppler-form-field.h:
/usr/include/poppler/glib/poppler-enums.h:
/usr/include/poppler/glib/poppler-attachment.h:
/usr/include/poppler/glib/poppler-annot.h:
/usr/include/poppler/glib/poppler-date.h:
/usr/include/poppler/glib/poppler-movie.h:
/usr/include/poppler/glib/poppler-media.h:
/usr/include/poppler/glib/poppler-structure-element.h:
src/agent/agent.h:
src/volume/volume.h:
src/store/store.h:
include/coffer.h:
src/store/blob.h:
src/store/meta.h:
src/util/util.h:
src/store/notify.h:
src/policy/policy.h:
