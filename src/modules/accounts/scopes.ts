export { SCOPES, isScope, type Scope } from '../../lib/http/scopes.js';
