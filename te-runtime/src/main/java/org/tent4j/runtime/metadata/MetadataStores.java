package org.tent4j.runtime.metadata;

import java.net.URI;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

import org.tent4j.api.ConfigException;
import org.tent4j.spi.Credentials;
import org.tent4j.spi.MetadataStore;
import org.tent4j.spi.MetadataStoreProvider;

/**
 * The metadata store plugins found on the class path, and the one way a URI becomes a store: the first provider (in
 * their order) that serves its scheme, configured by {@code metadata.<scheme>.*}. Used for the engine's own directory
 * ({@code metadata.uri}) and for transports that keep a protocol's keys of their own in such a store.
 */
public final class MetadataStores {
    private final List<MetadataStoreProvider> providers;
    private final Function<String, Map<String, String>> optionsUnder;

    /** @param optionsUnder the raw options under a prefix ({@code metadata.<scheme>.}) */
    public MetadataStores(List<MetadataStoreProvider> providers, Function<String, Map<String, String>> optionsUnder) {
        this.providers = List.copyOf(providers);
        this.optionsUnder = optionsUnder;
    }

    /**
     * What serves {@code u}, unopened.
     *
     * @param key the option {@code u} came from, named in errors (which mask any password in {@code u})
     * @throws ConfigException for a malformed URI or a scheme no provider serves
     */
    public StoreDirectory.Target target(String key, String u) {
        URI uri;
        try {
            uri = URI.create(u);
        } catch (IllegalArgumentException e) {
            // the parser's message quotes the input, password included
            throw new ConfigException(key, "malformed URI '" + Credentials.mask(u) + "': " + Credentials.mask(e.getMessage()));
        }
        String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase();
        MetadataStoreProvider p = providers.stream().filter(x -> x.schemes().contains(scheme)).findFirst()
                .orElseThrow(() -> new ConfigException(key, "no metadata store for '" + Credentials.mask(u)
                        + "' on the class path (schemes found: p2p, " + providers.stream().flatMap(x -> x.schemes().stream()).toList() + ")"));
        p.availability().ensureAvailable("metadata store " + scheme);
        return new StoreDirectory.Target(uri, p, optionsUnder.apply("metadata." + scheme + "."));
    }

    /** Opens the store {@code uri} names; the caller closes it. */
    public MetadataStore open(String key, URI uri) {
        StoreDirectory.Target t = target(key, uri.toString());
        return t.provider().open(t.uri(), t.options());
    }
}
