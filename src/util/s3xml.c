/*
 * s3xml.c — parsing the S3 gateway's XML request bodies (s3xml.h).
 */
#include <stdlib.h>
#include <string.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include "util/s3xml.h"

/* The element's local name is `name` (any namespace: clients send S3's or none). */
static int is(const xmlNode *n, const char *name)
{
	return n->type == XML_ELEMENT_NODE && !strcmp((const char *)n->name, name);
}

/* The text of element n (malloc'd), or NULL when it has element children. */
static char *text_of(const xmlNode *n)
{
	for (const xmlNode *c = n->children; c; c = c->next)
		if (c->type == XML_ELEMENT_NODE)
			return NULL;
	xmlChar *t = xmlNodeGetContent(n);
	char *s = strdup(t ? (const char *)t : "");
	xmlFree(t);
	return s;
}

void cof_s3xml_free(char **keys, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(keys[i]);
	free(keys);
}

int cof_s3xml_delete(const char *body, size_t len, char ***keys, size_t *n, int *quiet,
		     const char **why)
{
	xmlDoc *doc;
	xmlNode *root;
	char **k = NULL;
	size_t nk = 0;
	int rc = -1;

	*keys = NULL, *n = 0, *quiet = 0;
	if (len > 0x7fffffff) {
		*why = "the request body is too large";
		return -1;
	}
	doc = xmlReadMemory(body, (int)len, "delete.xml", NULL,
			    XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
	if (!doc || !(root = xmlDocGetRootElement(doc)) || !is(root, "Delete")) {
		*why = "the body is not XML with a root element Delete";
		goto out;
	}
	for (xmlNode *c = root->children; c; c = c->next) {
		if (c->type != XML_ELEMENT_NODE)
			continue;
		if (is(c, "Quiet")) {
			char *t = text_of(c);
			*quiet = t && !strcmp(t, "true");
			free(t);
			continue;
		}
		if (!is(c, "Object")) {
			*why = "Delete may hold only Quiet and Object elements";
			goto out;
		}
		if (nk == COF_S3_DELETE_MAX) {
			*why = "Delete holds more than 1000 Object elements";
			goto out;
		}
		char *key = NULL;
		for (xmlNode *o = c->children; o; o = o->next) {
			if (!is(o, "Key"))
				continue;
			if (key || !(key = text_of(o))) {
				free(key);
				*why = "an Object must hold one Key with text";
				goto out;
			}
		}
		if (!key || !*key) {
			free(key);
			*why = "an Object must hold one Key with text";
			goto out;
		}
		if (!nk)
			k = calloc(COF_S3_DELETE_MAX, sizeof *k);
		if (!k) {
			free(key);
			*why = "out of memory";
			goto out;
		}
		k[nk++] = key;
	}
	if (!nk) {
		*why = "Delete holds no Object";
		goto out;
	}
	rc = 0;
out:
	if (doc)
		xmlFreeDoc(doc);
	if (rc)
		cof_s3xml_free(k, nk);
	else
		*keys = k, *n = nk;
	return rc;
}

int cof_s3xml_complete(const char *body, size_t len, int **nums, char ***etags, size_t *n,
		       const char **why)
{
	xmlDoc *doc;
	xmlNode *root;
	int *nu = NULL;
	char **et = NULL;
	size_t k = 0;
	int rc = -1;

	*nums = NULL, *etags = NULL, *n = 0;
	if (len > 0x7fffffff) {
		*why = "the request body is too large";
		return -1;
	}
	doc = xmlReadMemory(body, (int)len, "complete.xml", NULL,
			    XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
	if (!doc || !(root = xmlDocGetRootElement(doc)) || !is(root, "CompleteMultipartUpload")) {
		*why = "the body is not XML with a root element CompleteMultipartUpload";
		goto out;
	}
	for (xmlNode *c = root->children; c; c = c->next) {
		if (c->type != XML_ELEMENT_NODE)
			continue;
		if (!is(c, "Part")) {
			*why = "CompleteMultipartUpload may hold only Part elements";
			goto out;
		}
		if (k == COF_S3_PARTS_MAX) {
			*why = "CompleteMultipartUpload holds more than 10000 parts";
			goto out;
		}
		if (!nu) {
			nu = calloc(COF_S3_PARTS_MAX, sizeof *nu);
			et = calloc(COF_S3_PARTS_MAX, sizeof *et);
			if (!nu || !et) {
				*why = "out of memory";
				goto out;
			}
		}
		char *num = NULL, *tag = NULL;
		int bad = 0;
		for (xmlNode *o = c->children; o; o = o->next) {
			if (is(o, "PartNumber"))
				bad |= num != NULL || !(num = text_of(o));
			else if (is(o, "ETag"))
				bad |= tag != NULL || !(tag = text_of(o));
		}
		char *end = NULL;
		long v = num ? strtol(num, &end, 10) : 0;
		if (bad || !num || !tag || !*num || *end || v < 1 || v > COF_S3_PARTS_MAX ||
		    (k && v <= nu[k - 1])) {
			free(num);
			free(tag);
			*why = "each Part needs one PartNumber (1 to 10000, ascending) and one ETag";
			goto out;
		}
		free(num);
		nu[k] = (int)v;
		et[k] = tag;
		k++;
	}
	if (!k) {
		*why = "CompleteMultipartUpload holds no Part";
		goto out;
	}
	rc = 0;
out:
	if (doc)
		xmlFreeDoc(doc);
	if (rc) {
		free(nu);
		cof_s3xml_free(et, k);
	} else {
		*nums = nu, *etags = et, *n = k;
	}
	return rc;
}
