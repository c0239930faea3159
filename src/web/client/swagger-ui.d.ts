/**
 * The little of Swagger UI's prebuilt bundle (swagger-ui-dist, which ships
 * no types) that the API page uses: mount a reference from a document.
 */
declare module 'swagger-ui-dist/swagger-ui-es-bundle.js' {
  interface SwaggerUIOptions {
    /** The element to render into. */
    domNode: HTMLElement;
    /** The OpenAPI document, already fetched (so that Swagger UI itself fetches nothing). */
    spec: object;
    /** Plugins: functions of Swagger UI's system returning what they add (here, a layout of components). */
    plugins?: Array<(system: never) => { components?: Record<string, unknown> }>;
    /** The name of the layout component to render. */
    layout?: string;
    deepLinking?: boolean;
    /** null: no badge from an online validator (it would call another site). */
    validatorUrl?: string | null;
    /** Whether the page's query (`?url=`, `?configUrl=`) may configure it. */
    queryConfigEnabled?: boolean;
    persistAuthorization?: boolean;
    displayOperationId?: boolean;
    docExpansion?: 'list' | 'full' | 'none';
    defaultModelsExpandDepth?: number;
    syntaxHighlight?: false | { activated: boolean; theme?: string };
    onComplete?: () => void;
  }
  const SwaggerUI: (options: SwaggerUIOptions) => unknown;
  export default SwaggerUI;
}
