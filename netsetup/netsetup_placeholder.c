/* Placeholder until the netsetup library lands. */
typedef int netsetup_placeholder_t;
