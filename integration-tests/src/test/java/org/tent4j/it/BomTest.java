package org.tent4j.it;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

import javax.xml.parsers.DocumentBuilderFactory;

import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

/**
 * {@code org.tent4j:tent4j-bom} lines up every published module at the reactor's version, and Netty at the version
 * the build uses, so that a user who imports it needs no other dependency management.
 */
class BomTest {
    /** Modules that are not published for users to depend on. */
    private static final Set<String> NOT_PUBLISHED = Set.of("tent4j-bom", "samples", "example-transport", "bom-consumer",
            "integration-tests");

    private static final Path ROOT = Path.of(System.getProperty("tent4j.root", "..")).toAbsolutePath().normalize();

    @Test
    void everyPublishedModuleIsInTheBomAtTheReactorsVersion() throws Exception {
        Document root = parse(ROOT.resolve("pom.xml"));
        Document bom = parse(ROOT.resolve("bom/pom.xml"));
        assertEquals(text(child(root.getDocumentElement(), "version")), text(child(bom.getDocumentElement(), "version")), "bom version");
        assertEquals(property(root, "netty.version"), property(bom, "netty.version"), "bom netty.version");

        Set<String> published = new TreeSet<>();
        for (String module : children(child(root.getDocumentElement(), "modules"), "module")) {
            String artifact = text(child(parse(ROOT.resolve(module).resolve("pom.xml")).getDocumentElement(), "artifactId"));
            if (!NOT_PUBLISHED.contains(artifact)) {
                published.add(artifact);
            }
        }
        Set<String> managed = new TreeSet<>();
        Element deps = child(child(bom.getDocumentElement(), "dependencyManagement"), "dependencies");
        for (Element d : elements(deps, "dependency")) {
            if (text(child(d, "groupId")).equals("org.tent4j")) {
                assertEquals("${project.version}", text(child(d, "version")), text(child(d, "artifactId")));
                managed.add(text(child(d, "artifactId")));
            }
        }
        assertEquals(published, managed, "published modules against the BOM's entries");
    }

    private static Document parse(Path pom) throws Exception {
        return DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(Files.newInputStream(pom));
    }

    private static String property(Document pom, String name) {
        return text(child(child(pom.getDocumentElement(), "properties"), name));
    }

    private static Element child(Element parent, String name) {
        List<Element> found = elements(parent, name);
        if (found.isEmpty()) {
            throw new AssertionError("<" + parent.getTagName() + "> has no <" + name + ">");
        }
        return found.get(0);
    }

    private static List<Element> elements(Element parent, String name) {
        List<Element> out = new ArrayList<>();
        NodeList nodes = parent.getChildNodes();
        for (int i = 0; i < nodes.getLength(); i++) {
            if (nodes.item(i).getNodeType() == Node.ELEMENT_NODE && ((Element) nodes.item(i)).getTagName().equals(name)) {
                out.add((Element) nodes.item(i));
            }
        }
        return out;
    }

    private static List<String> children(Element parent, String name) {
        return elements(parent, name).stream().map(BomTest::text).toList();
    }

    private static String text(Element e) {
        return e.getTextContent().trim();
    }
}
