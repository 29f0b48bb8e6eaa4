package org.tent4j.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.net.JarURLConnection;
import java.net.URL;
import java.util.Collections;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.jar.JarFile;

import org.junit.jupiter.api.Test;

/** What the BOM and the library jars leave on a user's class path. */
class ClassPathTest {
    private final ClassLoader loader = ClassPathTest.class.getClassLoader();

    /**
     * Every Netty jar is at one 4.2 version: without the BOM's Netty entries grpc-netty brings 4.1 jars beside
     * tent4j's 4.2, and the store fails at start with NoClassDefFoundError io/netty/channel/MultiThreadIoEventLoopGroup.
     * Each Netty jar names its version in META-INF/io.netty.versions.properties; jars that shade Netty under another
     * package (ratis-thirdparty carries a 4.1) keep that file too, so only jars holding io.netty classes count.
     */
    @Test
    void everyNettyJarIsAtOneVersion42() throws IOException {
        Map<String, String> versions = new TreeMap<>();
        for (URL url : Collections.list(loader.getResources("META-INF/io.netty.versions.properties"))) {
            JarURLConnection connection = (JarURLConnection) url.openConnection();
            connection.setUseCaches(false);
            Properties p = new Properties();
            try (JarFile jar = connection.getJarFile()) {
                if (jar.stream().noneMatch(e -> e.getName().startsWith("io/netty/"))) {
                    continue;
                }
                try (InputStream in = jar.getInputStream(jar.getEntry("META-INF/io.netty.versions.properties"))) {
                    p.load(in);
                }
            }
            p.stringPropertyNames().stream().filter(k -> k.endsWith(".version"))
                    .forEach(k -> versions.put(k.substring(0, k.length() - ".version".length()), p.getProperty(k)));
        }
        assertTrue(versions.containsKey("netty-codec-http2"), "grpc-netty's Netty jars are on the class path: " + versions);
        assertEquals(1, versions.values().stream().distinct().count(), "Netty versions on the class path: " + versions);
        assertTrue(versions.values().iterator().next().startsWith("4.2."), "Netty version: " + versions);
    }

    @Test
    void theLibrariesBringNoLoggingBackendNorItsConfiguration() throws IOException, ClassNotFoundException {
        assertNull(loader.getResource("logback.xml"), "a library jar carries logback.xml");
        assertNull(loader.getResource("log4j2.xml"), "a library jar carries log4j2.xml");
        assertFalse(loader.getResources("META-INF/services/org.slf4j.spi.SLF4JServiceProvider").hasMoreElements(),
                "a library jar brings an SLF4J provider");
        assertThrows(ClassNotFoundException.class, () -> Class.forName("ch.qos.logback.classic.Logger"), "logback-classic");
        assertEquals("org.slf4j.LoggerFactory", Class.forName("org.slf4j.LoggerFactory").getName(), "the SLF4J API is there");
    }
}
