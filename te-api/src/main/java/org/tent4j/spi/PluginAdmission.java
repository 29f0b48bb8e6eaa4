package org.tent4j.spi;

import java.util.Comparator;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.ToIntFunction;

/**
 * The rule by which every tent4j plugin loader admits and orders providers: the runtime's transports, device platforms
 * and metadata stores, the NIXL-style agent's backends and {@code tent4j doctor}. It lives here, in the SPI, so that a
 * loader which may not depend on the runtime (the agent, the doctor, a transport finding device platforms) applies the
 * same rule and reports the same verdict.
 *
 * <ul>
 *   <li>Version: a provider built for a newer SPI than the loader's is refused, since it may call methods this SPI
 *       lacks; an older one is admitted, since methods added since come with defaults. A version below 1 is no version
 *       at all and is refused too.</li>
 *   <li>Order: by the provider's constant order (lower first), then by id, so that the result never depends on the
 *       order of the class path.</li>
 * </ul>
 */
public final class PluginAdmission {
    private PluginAdmission() {
    }

    /**
     * Why a provider is refused, or empty when it is admitted.
     *
     * @param spi             the SPI's name in messages: {@code transport}, {@code device platform}, {@code metadata store}
     * @param providerVersion the SPI version the provider says it was built for
     * @param runtimeVersion  the newest SPI version the loader knows
     * @return for example "built for transport SPI version 2, this runtime supports 1 to 1"
     */
    public static Optional<String> refusal(String spi, int providerVersion, int runtimeVersion) {
        if (providerVersion >= 1 && providerVersion <= runtimeVersion) {
            return Optional.empty();
        }
        return Optional.of("built for " + spi + " SPI version " + providerVersion + ", this runtime supports 1 to " + runtimeVersion);
    }

    /**
     * The order of providers: by {@code order} (lower first), then by {@code id}.
     *
     * @param order the provider's constant order ({@link TransportProvider#order()} and its peers)
     * @param id    the provider's canonical id
     * @param <P>   the provider type
     * @return a comparator that puts the first provider to use first
     */
    public static <P> Comparator<P> order(ToIntFunction<? super P> order, Function<? super P, String> id) {
        return Comparator.<P>comparingInt(order).thenComparing(id, Comparator.naturalOrder());
    }
}
