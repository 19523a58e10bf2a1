// Package openapicheck reads an OpenAPI 3.x document and checks JSON
// values against its schemas. It is the mechanism shared by the test
// helpers that validate the control API's responses and Band's.
//
// Invariants:
//   - Parse resolves every $ref of the document before it returns, so a
//     document with a broken $ref is refused rather than validating nothing.
//   - Only $refs under #/components/schemas/ resolve; a name is taken
//     literally first and as an RFC 6901 pointer token second (Band's
//     schema names contain "/" unescaped).
//   - Validate implements a subset of JSON Schema (type, enum, const,
//     allOf/anyOf/oneOf, properties, required, additionalProperties, items,
//     min/maxItems, min/maxLength, minimum/maximum, the formats uuid,
//     date-time and email, OpenAPI 3.0's nullable); every other keyword is
//     an annotation. Values are expected decoded by DecodeJSON, so numbers
//     stay exact and "integer" is checked by value.
//   - Validate never recurses deeper than maxDepth schemas, so a $ref cycle
//     that consumes no data ends with a violation instead of a stack
//     overflow.
//   - Find matches a request path to the operation whose template has the
//     most literal segments; a {parameter} never matches an empty segment.
package openapicheck
