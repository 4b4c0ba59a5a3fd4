export { studioHandler, STUDIO_PREFIX, type StudioOptions } from './studio.js';
export { isLoopbackRequest, parseTokenRequest, type LocalRole, type LocalSignIn } from './local-signin.js';
