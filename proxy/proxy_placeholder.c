/* Placeholder until the proxy library lands. */
typedef int proxy_placeholder_t;
